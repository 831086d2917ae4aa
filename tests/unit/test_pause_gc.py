"""Automatic garbage collection while an answer is built: off in the
block, then as the caller had it."""

from __future__ import annotations

import gc

import pytest

from rtframework.placement.pause_gc import pause_gc


def test_collection_is_off_in_the_block_and_on_again_after(collection_on):
    with pause_gc():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_collection_is_on_again_after_a_failure_in_the_block(collection_on):
    with pytest.raises(ValueError), pause_gc():
        raise ValueError("boom")
    assert gc.isenabled()


def test_collection_the_caller_turned_off_stays_off(collection_on):
    gc.disable()
    with pause_gc():
        pass
    assert not gc.isenabled()


def test_an_inner_pause_leaves_collection_to_the_outer_one(collection_on):
    with pause_gc():
        with pause_gc():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
