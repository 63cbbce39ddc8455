"""Meta's Graph API (Instagram, Facebook, Threads): the readers' and the publishers' base."""
