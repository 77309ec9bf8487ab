"""`te-apply-records`: each te function takes its best schedule from a tuning log."""

from __future__ import annotations

import os
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.passes import ModulePass

TUNED_ATTR = "ember.tuned"
"""Marks a kernel whose schedule came from a tuning record."""


@dataclass(frozen=True)
class TeApplyRecords(ModulePass):
    """Give each te function the best schedule a tuning log holds for it on the
    module's target, replacing its own, and mark it `ember.tuned`; a function
    without a record keeps its schedule. A damaged record is skipped with a
    `TuningRecordWarning`, never applied (`ember.tune.records.history_best`).

        ember-opt m.mlir -p 'convert-graph-to-te,te-apply-records{records="r.jsonl"}'

        func.func @k(...) {                 func.func @k(...) attributes {ember.tuned} {
          ...                                 ...
          te.schedule { te.split ... }  ──►   te.schedule { <the record's> }
        }                                   }

    `records`: "auto" (the default) is the log under ember's cache directory,
    where `ember-tune` adds its best records, if any; "" applies none; else
    paths joined by the path separator (`os.pathsep`).
    """

    name = "te-apply-records"

    records: str = "auto"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from ember.backends.source.target import target_of
        from ember.tune.records import default_records, history_best
        from ember.tune.task import set_schedule

        if self.records == "auto":
            paths = [p for p in (default_records(),) if p]
        else:
            paths = [p for p in self.records.split(os.pathsep) if p]
        if not paths:
            return
        target = target_of(op)
        for fn, schedule in history_best(op, paths, target).items():
            set_schedule(fn, schedule)
            fn.attributes[TUNED_ATTR] = UnitAttr()
