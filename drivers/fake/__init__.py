"""A driver with no hypervisor: configurable nodes and sizes, instances in
memory. For tests, demos and benchmarks."""
