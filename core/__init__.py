"""The ground every layer stands on: the one settings class and the one error root."""
