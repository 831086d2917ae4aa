"""Placement: the store of providers, inventories and allocations."""
