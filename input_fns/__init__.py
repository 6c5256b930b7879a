"""Ready-made input_fns, each `fn(params, input_context=None)`.

* `synthetic`: generated regression, classification and image data.
* `digits`: scikit-learn's bundled handwritten digits (no download).
* `files`: TFRecord and CSV files, plus a TFRecord writer.
* `tfds`: a TensorFlow Datasets data set already prepared on local disk.

params['batch_size'] is the global batch size; with an input context an
input_fn shards itself and batches per replica (see `_common`). It must be
an integer from 1 to `_common.MAX_BATCH_SIZE`, and no larger than the data
set where its size is known up front (digits, synthetic, prepared TFDS
data); anything else is one InputFnError before any data is materialised.
"""
