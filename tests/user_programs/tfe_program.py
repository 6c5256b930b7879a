"""A tf.estimator 2.15 program (the smoke matrix), run unchanged with
`python -m estimator_rt.compat tfe_program.py MODELS BASE_DIR STRATEGY
MAX_STEPS SAVE_STEPS` (as api_program.py's arguments).

Written against tf.estimator's API as its users wrote it: no strategy for a
parameter-server cluster (tf.estimator trained between-graph whenever
TF_CONFIG had ps tasks), `MultiWorkerMirroredStrategy` in `RunConfig` for
synchronous training, and exporters with their serving input receivers.
The model_fns are smoke_models'. Prints one line per model,
`RESULT <model> {"metrics": ..., "exports": [...]}`.
"""

import json
import sys

import tensorflow as tf

import smoke_models


def _serving_input_receiver_fn(model):
  if model == 'canned':
    spec = tf.feature_column.make_parse_example_spec(
        smoke_models.feature_columns())
    return tf.estimator.export.build_parsing_serving_input_receiver_fn(spec)

  def serving_input_receiver_fn():
    x = tf.compat.v1.placeholder(
        tf.float32, [None, smoke_models.NUM_FEATURES], name='x')
    return tf.estimator.export.ServingInputReceiver({'x': x}, {'x': x})

  return serving_input_receiver_fn


def main(argv):
  models, base_dir, strategy, max_steps, save_steps = argv[1:]
  for model in models.split(','):
    _train_and_evaluate(model, f'{base_dir}/{model}', strategy,
                        int(max_steps), int(save_steps))


def _train_and_evaluate(model, model_dir, strategy, max_steps, save_steps):
  train_distribute = None
  if strategy == 'multi_worker_mirrored':
    train_distribute = tf.distribute.experimental.MultiWorkerMirroredStrategy()
  config = tf.estimator.RunConfig(
      model_dir=model_dir, save_checkpoints_steps=save_steps,
      train_distribute=train_distribute)
  if model == 'canned':
    estimator = tf.estimator.DNNClassifier(
        hidden_units=[8], feature_columns=smoke_models.feature_columns(),
        config=config)
  else:
    estimator = tf.estimator.Estimator(smoke_models.MODEL_FNS[model],
                                       config=config)
  receiver_fn = _serving_input_receiver_fn(model)
  # tf.estimator returned (metrics, exports) when local, None in a cluster.
  result = tf.estimator.train_and_evaluate(
      estimator,
      tf.estimator.TrainSpec(smoke_models.input_fn, max_steps=max_steps),
      tf.estimator.EvalSpec(
          smoke_models.eval_input_fn, steps=None, throttle_secs=0,
          exporters=[tf.estimator.LatestExporter('latest', receiver_fn),
                     tf.estimator.FinalExporter('final', receiver_fn)]))
  metrics, exports = result or (None, [])
  print(f'RESULT {model} ' + json.dumps(
      {'metrics': metrics,
       'exports': [e.decode() if isinstance(e, bytes) else e
                   for e in exports or []]}, default=float), flush=True)


if __name__ == '__main__':
  main(sys.argv)
