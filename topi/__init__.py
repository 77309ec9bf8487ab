"""Operator library: te computes and default CPU schedules for graph operators
(TVM's topi): what a graph op lowers to, and how it is scheduled."""
