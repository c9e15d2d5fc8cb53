"""The benchmarks behind docs/benchmarks.md: attention and datasets (bench), grading a class (bench_grade); run as
``python -m benchmarks.<name>`` from the repository root (make bench, make bench-grade)."""
