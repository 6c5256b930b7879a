"""The core: what every other package speaks, and model_dir's two kinds of files.

A run starts from the user's `model_fn` and `input_fn`; this package holds
the contract between them and the runtime, and the files a run leaves
behind that every layer reads:

  - `errors`: the errors a user can fix (`UserInputError`, `ModelFnError`,
    `InputFnError`, ...); `tf_errors`: those tf.estimator 2.15 raised as
    TensorFlow's classes.
  - `mode_keys`: `ModeKeys`, the three modes a model_fn is called in.
  - `spec`: `EstimatorSpec`, what a model_fn returns, validated;
    `export_outputs`: the serving outputs it may name.
  - `user_fns`: calling the user's model_fn and input_fn with the
    arguments they declare, and loading them by name.
  - `checkpoints`: checkpoints in model_dir (when to save, which one to
    resume from, whether one is whole); `checkpoint_slices`: reading a
    partitioned tensor's stored slices as a restore reads them;
    `summaries`: TensorBoard event files, written and read back.
  - `cli`: what the binaries share (flag parsing, JSON flags);
    `log_handlers`: one line per log message.
  - `legacy_layers`: `tf.compat.v1.layers` from tf_keras whichever Keras
    `tf.keras` is (the import hook loads it alone: standard library and
    TensorFlow's lazy loader only).

May import: nothing else of estimator_rt (TensorFlow, absl and the
standard library only). Every other package may import this one.
"""
