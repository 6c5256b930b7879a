"""Input: from an `input_fn` to what a compiled loop iterates over.

  - `pipeline`: the input_fn called once per worker or replica (the
    dataset sharded and batched as its signature says), distributed by
    the strategy, its position saved in checkpoints (`checkpoint_input`).
  - `overlap`: training input prefetched so that it overlaps the step.
  - `slice_batches`: in-memory data read a batch at a time.
  - `quick_start`: a few-element input (a request's) started without
    tf.data's default rewrites and autotuning.
  - `constant_elements`: a graph's dataset of constants read without a
    session (a request fed to a kept prediction graph).
  - `dataset_chain`: a graph dataset's chain of ops, which the two above
    read.
  - `read_once`: a dataset over Python state (a generator) read once, its
    first batch, read to build the model, on the loop's own iterator.
  - `numpy_io`: tf.compat.v1.estimator.inputs' `numpy_input_fn` and
    `pandas_input_fn`.

May import: `core`. Imported by the engines (`training`) and above.
"""
