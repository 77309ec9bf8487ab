"""Schedule IR: the primitives of a TVM schedule as ops of the `te` dialect."""

SCHEDULE_OPS: list = []
