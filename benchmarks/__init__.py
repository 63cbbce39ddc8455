"""Load measurements behind the architecture decisions (see docs/adr/)."""
