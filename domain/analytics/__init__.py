"""Analytics and intelligence: reads over the marts, and tracked competitors."""
