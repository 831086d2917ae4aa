"""A libvirt driver: sizes the host from libvirt (CPUs, memory), the instances
filesystem (disk) and the host capabilities (traits); runs domains."""
