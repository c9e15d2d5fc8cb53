"""docs/benchmarks.md has three writers; each rewrites only its own part and keeps the others' sections."""

from benchmarks import bench, bench_grade


def test_grading_section_is_appended_then_replaced(tmp_path):
    report = tmp_path / "benchmarks.md"
    report.write_text("# Benchmarks\n\nattention numbers\n")
    bench_grade.write_section(report, ["time 100.0 s"])
    bench_grade.write_section(report, ["time 90.0 s"])
    text = report.read_text()
    assert text.startswith("# Benchmarks\n\nattention numbers\n")
    assert text.count(bench_grade.BEGIN) == 1 and "time 90.0 s" in text and "time 100.0 s" not in text


def test_bench_rewrite_keeps_the_browser_and_grading_sections(tmp_path):
    report = tmp_path / "benchmarks.md"
    report.write_text("old attention numbers\n<!-- browser:begin -->\nbrowser timings\n<!-- browser:end -->\n")
    bench_grade.write_section(report, ["time 90.0 s"])
    kept = bench.kept_sections(report)
    assert "browser timings" in kept and "time 90.0 s" in kept and "old attention numbers" not in kept
    assert bench.kept_sections(tmp_path / "missing.md") == ""


def test_training_section_is_replaced_and_kept_by_the_attention_rewrite(tmp_path):
    from benchmarks import bench_train

    report = tmp_path / "benchmarks.md"
    report.write_text("old attention numbers\n")
    measured = bench_train.measure(3, old_steps=3)  # three real steps of each, scaled to the notebook's count
    assert measured["steps"] == 3 and measured["cpu"] > 0 and measured["full"] > measured["cpu"]
    assert measured["old_full"] > 0
    bench_train.write_section(report, ["a placeholder line"])
    bench_train.write_section(report, bench_train.lines(measured))
    text = report.read_text()
    assert text.count(bench_train.BEGIN) == 1 and "a placeholder line" not in text and "ratio" in text
    assert "ratio" in bench.kept_sections(report) and "old attention numbers" not in bench.kept_sections(report)


def test_positions_section_is_replaced_and_kept_by_the_attention_rewrite(tmp_path):
    from benchmarks import bench_positions

    report = tmp_path / "benchmarks.md"
    report.write_text("old attention numbers\n")
    measured = bench_positions.measure(2)  # two real steps of each scheme, scaled to the notebook's count
    assert measured["steps"] == 2 and set(measured["per_scheme"]) == {"learned", "sinusoidal", "rope", "none"}
    assert measured["total"] > 0 and measured["old"] > 0
    bench_positions.write_section(report, ["a placeholder line"])
    bench_positions.write_section(report, bench_positions.lines(measured))
    text = report.read_text()
    assert text.count(bench_positions.BEGIN) == 1 and "a placeholder line" not in text and "ratio" in text
    assert "positions" in bench.kept_sections(report) and "old attention numbers" not in bench.kept_sections(report)
