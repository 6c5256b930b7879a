"""The scenario programs, one module each (`run(rec)`), in running order.

Each is a small seeded tf.estimator program written with tf.estimator's
public names only; `common.py` holds what they share. A module's `NEEDS`
names packages it imports beyond TensorFlow and NumPy (pandas): the
comparison runs it with an interpreter that has them.
"""

NAMES = (
    'api_surface',
    'run_config',
    'specs',
    'estimator_tf1',
    'estimator_args',
    'estimator_tf2',
    'train_and_evaluate',
    'exporters',
    'hooks_run',
    'hooks_args',
    'early_stopping',
    'inputs_numpy',
    'inputs_pandas',
    'export_module',
    'canned',
    'canned_v1',
    'heads',
    'keras',
    'experimental_canned',
    'tpu',
    'parse_and_warm_start',
)
