"""Auto-tuning: schedules found by search for any te computation.

    s = ember.auto_schedule(C, [A, B, C], time_budget_s=120, records="mm.jsonl")
    mod = ember.build(s, [A, B, C])
    mod = ember.build(te.create_schedule(C.op), [A, B, C], tuning_records="mm.jsonl")

`task` reads a te function into stages, `space` generates candidates (schedule
IR text) by Ansor's rules, `model` takes a model's kernels as tasks whose
candidates are their templates' knob configs (`tune_model`), `measure` builds
them in a process pool and times them in an isolated runner process, checked
against the untuned kernel,
`records` keeps JSON-lines tuning logs, `search` runs random or evolutionary
search guided by `cost_model`. The package is lazy, so the runner process
(`ember.tune.runner`) imports only the runtime.
"""

from importlib import import_module
from typing import Any

_LAZY = {
    "auto_schedule": ("ember.tune.search", "auto_schedule"),
    "tune": ("ember.tune.search", "tune"),
    "TuneResult": ("ember.tune.search", "TuneResult"),
    "TaskTuner": ("ember.tune.search", "TaskTuner"),
    "tune_model": ("ember.tune.model", "tune_model"),
    "extract_tasks": ("ember.tune.model", "extract_tasks"),
    "KnobSpace": ("ember.tune.model", "KnobSpace"),
    "ModelTuneResult": ("ember.tune.model", "ModelTuneResult"),
    "Task": ("ember.tune.task", "Task"),
    "SearchSpace": ("ember.tune.space", "SearchSpace"),
    "LocalBuilder": ("ember.tune.measure", "LocalBuilder"),
    "LocalRunner": ("ember.tune.measure", "LocalRunner"),
    "MeasureInput": ("ember.tune.measure", "MeasureInput"),
    "MeasureResult": ("ember.tune.measure", "MeasureResult"),
    "load_records": ("ember.tune.records", "load_records"),
    "merge_records": ("ember.tune.records", "merge_records"),
    "best_record": ("ember.tune.records", "best_record"),
    "apply_history_best": ("ember.tune.records", "apply_history_best"),
    "TuningRecordWarning": ("ember.tune.records", "TuningRecordWarning"),
    "RPCRunner": ("ember.tune.rpc_runner", "RPCRunner"),
    "DaskBuilder": ("ember.tune.dask", "DaskBuilder"),
    "DaskRunner": ("ember.tune.dask", "DaskRunner"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(import_module(module), attr)
    raise AttributeError(f"module 'ember.tune' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted(_LAZY)
