"""A user's program on estimator_rt's Python API (the smoke matrix).

    python api_program.py MODELS BASE_DIR STRATEGY MAX_STEPS SAVE_STEPS

MODELS is a comma-separated list of tf2, tf1 and canned (smoke_models),
each trained in BASE_DIR/<model>; STRATEGY a strategy name or 'default'.
The cluster, if any, comes from TF_CONFIG. Prints one line per model,
`RESULT <model> {"metrics": ..., "exports": [...]}`.
"""

import json
import sys

import smoke_models  # Imports TensorFlow before estimator_rt does.

import estimator_rt as ert  # pylint: disable=g-bad-import-order


def main(argv):
  models, base_dir, strategy, max_steps, save_steps = argv[1:]
  for model in models.split(','):
    _train_and_evaluate(model, f'{base_dir}/{model}', strategy,
                        int(max_steps), int(save_steps))


def _train_and_evaluate(model, model_dir, strategy, max_steps, save_steps):
  config = ert.RunConfig(
      model_dir=model_dir, save_checkpoints_steps=save_steps,
      train_distribute=None if strategy == 'default' else strategy)
  if model == 'canned':
    estimator = smoke_models.canned_estimator(config, {})
  else:
    estimator = ert.Estimator(smoke_models.MODEL_FNS[model], config=config)
  metrics, exports = ert.train_and_evaluate(
      estimator,
      ert.TrainSpec(smoke_models.input_fn, max_steps=max_steps),
      ert.EvalSpec(smoke_models.eval_input_fn, steps=None, throttle_secs=0,
                   exporters=[ert.LatestExporter(), ert.FinalExporter()]))
  print(f'RESULT {model} ' + json.dumps(
      {'metrics': metrics, 'exports': exports}, default=float), flush=True)


if __name__ == '__main__':
  main(sys.argv)
