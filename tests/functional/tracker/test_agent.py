"""The agent loop of ``rtf compute run``: a slow pass keeps the host up."""

from __future__ import annotations

import threading
import time

import pytest

from rtframework.tracker import agent


@pytest.fixture
def short_down_time(config):
    """A host is down after 3 s without a heartbeat; one beat a second."""
    config.config(service_down_time=3, update_resources_interval=60)


def test_a_pass_longer_than_service_down_time_keeps_the_host_up(
        make_tracker, store, conf, short_down_time):
    tracker = make_tracker("h1")
    in_driver, release = threading.Event(), threading.Event()
    listed = tracker.driver.get_available_nodes

    def hung_driver():
        in_driver.set()
        release.wait(30)
        return listed()

    tracker.driver.get_available_nodes = hung_driver
    stop = threading.Event()
    loop = threading.Thread(target=agent.run,
                            args=(conf, tracker, tracker.update_available_resource, stop))
    loop.start()
    try:
        assert in_driver.wait(30)
        store.heartbeat("h1")  # the service record exists, as after a pass
        began = time.monotonic()
        seen_down = []
        # Twice service_down_time inside one pass: a heartbeat only between
        # passes would let the host go down (and its instances evacuated).
        while time.monotonic() - began < 2 * conf.service_down_time:
            if not store.is_host_up("h1", conf.service_down_time):
                seen_down.append(round(time.monotonic() - began, 1))
            time.sleep(0.25)
        assert seen_down == []
    finally:
        release.set()
        stop.set()
        loop.join(30)
    assert not loop.is_alive()
    assert store.is_host_up("h1", conf.service_down_time)
    assert tracker.stats.writes > 0  # the pass went on once the driver answered


def test_a_failing_pass_does_not_stop_the_agent(make_tracker, conf, short_down_time, caplog):
    tracker = make_tracker("h1")
    calls = []

    def failing_pass():
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise RuntimeError("driver exploded")
        stop.set()

    conf.set_override("update_resources_interval", 1)
    stop = threading.Event()
    agent.run(conf, tracker, failing_pass, stop)
    assert len(calls) == 2
    assert "resource update of host h1 failed; retrying" in caplog.text
    assert "driver exploded" in caplog.text


def test_a_half_written_catalogue_is_one_line_without_a_traceback(
        make_tracker, conf, short_down_time, caplog, tmp_path):
    """The bare-metal agent reads its catalogue every pass; while an
    operator's tool writes it, the named error is logged as one line."""
    from rtframework_drivers.baremetal import catalogue as cat

    half = tmp_path / "nodes.json"
    half.write_text('[{"uuid": "4e4e0000-0000-4000-8000-00000000000')
    tracker = make_tracker("h1")
    stop = threading.Event()

    def pass_on_the_half_file():
        stop.set()
        cat.load_catalogue(str(half))

    agent.run(conf, tracker, pass_on_the_half_file, stop)
    (failed,) = [r for r in caplog.records if "resource update of host h1" in r.getMessage()]
    assert failed.exc_info is None
    assert f"node catalogue {half} is not valid JSON" in failed.getMessage()
    assert "Traceback" not in caplog.text
