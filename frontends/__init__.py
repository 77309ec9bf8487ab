"""Model importers: ONNX models to graph IR (`ember.frontends.onnx`)."""
