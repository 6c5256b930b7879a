"""tf.estimator 2.15's canned estimators on estimator_rt's graph engine.

    import estimator_rt as ert
    classifier = ert.DNNClassifier(hidden_units=[64, 32],
                                   feature_columns=columns, model_dir=...)

Modules: `dnn`, `linear`, `dnn_linear_combined`, `baseline` (the TF2
classes, `tf.estimator.X`), `v1` (`tf.compat.v1.estimator.X`), with
`optimizers` (what a named optimizer means) and `base` (the engine, the
features, the head and the train op every one shares). See base.py for why
they run in the graph engine.
"""
