"""Staging, marts and insights: the assets, their checks and the algorithms behind them."""
