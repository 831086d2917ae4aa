"""A bare-metal driver in the manner of ironic: one provider per physical
node from an operator-kept catalogue file, each offering one unit of its
custom resource class."""
