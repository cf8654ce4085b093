"""Measuring fastperf: the one clock, runner and statistic (`clock`), the benchmarks (`bench`, `parity`)."""
