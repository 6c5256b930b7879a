r"""What a tf.estimator program observes, side by side with tf.estimator 2.15.

Scenario programs (`scenarios/`, small and seeded) call tf.estimator's
public API through its public names (`tf.estimator`, `tf.compat.v1.
estimator`, ...) as programs do, and record what a program sees: return
values, exceptions, which arguments a constructor or method takes, the
files a model_dir and an export hold (events' tags, steps and value kinds,
the checkpoint state), the process state left behind (FileWriterCache, the
default graph and its collections, the INFO lines scripts grep, their
numbers masked by how they are printed: a float32's digits or more) and
the calls hooks and saving listeners receive (`recorder.py`, `files.py`).

Each scenario runs in both behaviours (`run.py --behavior v1|v2`: v1 calls
`tf.compat.v1.disable_v2_behavior()` first). `record.py`, run once with
tf.estimator 2.15's interpreter, writes the reference records and the
coverage map (which scenario calls which public name, from a trace of
2.15's code: `trace.py`) into tests/data/tf_estimator_215/observables/;
`compare.py` runs the same scenarios here and lists every difference
(REPORT.md); tests/test_observables_215.py fails on a difference that
ALLOWLIST.json does not give a reason for, and on a public name no
scenario covers.

Not shipped: the package lives under scripts/ and runs unchanged on
TensorFlow 2.15 (Python 3.11) and 2.21.
"""
