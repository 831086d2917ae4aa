"""The demo's move steps tell the story of a double claim."""

from __future__ import annotations

import pytest

from rtframework import demo, demo_moves


@pytest.mark.sqlite_only
def test_demo_moves_hold_both_sides_and_end_with_one(conf, tmp_path):
    demo.configure(conf, str(tmp_path / "demo"))
    lines: list[str] = []
    # The evacuation step moves batch-1, booted by an earlier step of the
    # whole demo (tests/functional/test_demo.py runs it).
    steps = [demo.STEPS[0]] + [s for s in demo.STEPS if s.run.__module__ == demo_moves.__name__
                               and s.run is not demo_moves.evacuate_from_a_down_host]
    assert len(steps) == 5
    demo.run(conf, lines.append, steps)
    text = "\n".join(lines)
    # Cold migration away from host-b: both hold it, the periodic runs keep it.
    assert "  during  host-b: DISK_GB=20, MEMORY_MB=2048, VCPU=2" in text
    assert "  still   host-b: DISK_GB=20, MEMORY_MB=2048, VCPU=2" in text
    assert "  after   host-b: nothing" in text
    # Same-host resize: both flavors while it runs, the new one once after.
    assert "DISK_GB=60, MEMORY_MB=6144, VCPU=6" in text
    assert "confirmed: app-1 is medium" in text and "counted once" in text
    assert "healed" not in text
    assert "Why both halves must survive the other host's heal" in text
    # Live migration: both sides while running, the destination after.
    live = text[text.index("Live-migrate app-1"):]
    assert "running (migration claim)" in live and "completed: app-1 runs on" in live
    # app-1 is deleted at the end: every host is empty again.
    rows = {tuple(c.strip() for c in line.strip("|").split("|"))
            for line in lines[-2].splitlines() if line.startswith("| host-")}
    assert rows and {row[3] for row in rows} == {"0"}
