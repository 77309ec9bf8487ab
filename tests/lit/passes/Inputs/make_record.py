"""Write a tuning log for the lit tests: one record per (schedule, cost) for
function @NAME of FILE, measured on this machine.

    python make_record.py FILE NAME LOG 'te.schedule {...}' 1e-3 [...]
"""

import sys

from xdsl.dialects import func
from xdsl.parser import Parser

from ember.backends.kernel_cache import target_fingerprint
from ember.backends.llvm import Target
from ember.passes import get_context
from ember.tune.records import Record, append_records
from ember.tune.task import Task

path, name, log, *pairs = sys.argv[1:]
module = Parser(get_context(), open(path).read(), path).parse_module()
fn = next(
    f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == name
)
task = Task(str(module.__class__([fn.clone()])))
target = target_fingerprint(Target())
records = [
    Record(task.workload, target, schedule, [float(cost)])
    for schedule, cost in zip(pairs[::2], pairs[1::2], strict=True)
]
append_records(log, records)
