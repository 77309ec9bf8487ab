"""The model compiler: a model or a schedule to a runnable module.

- `model.py`: `compile_model` (import, the target backend's one pipeline,
  linking), `link_model`, `lower_to_te`;
- `build.py`: `ember.build` and `ember.lower`, a te schedule to its loop nest
  or to machine code.

The façade names them (`ember.compile_model`, `ember.build`, `ember.lower`);
what both drive lies below: the passes and their pipelines (`ember.passes`),
each kind's backend with the kernel pool and cache (`ember.backends`), the
frontends and the tuning records.
"""
