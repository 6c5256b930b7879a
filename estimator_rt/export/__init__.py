"""Export: SavedModels and the exporters that write them during a run.

  - `saved_model`: serving input receivers and the eager engine's save
    (`estimator_rt.export.ServingInputReceiver`, ...).
  - `export_dirs`: where an export lands, `<export_dir_base>/<n>`, whole
    or not at all.
  - `exporters`: `LatestExporter`, `BestExporter`, `FinalExporter`.

The package is also the public namespace tf.estimator's `export` was:
`estimator_rt.export.PredictOutput`, `estimator_rt.export.
build_parsing_serving_input_receiver_fn`, ... resolve here on first use
(the output classes are `core.export_outputs`', which EstimatorSpec checks).

May import: `core`. Imported by the engines (`training`) and above.
"""

import importlib

# Where the public names of this namespace are defined, in lookup order.
_DEFINED_IN = ('estimator_rt.export.saved_model',
               'estimator_rt.core.export_outputs')


def __getattr__(name):
  if not name.startswith('_'):
    for module_name in _DEFINED_IN:
      module = importlib.import_module(module_name)
      if hasattr(module, name):
        return getattr(module, name)
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


def __dir__():
  names = set(globals())
  for module_name in _DEFINED_IN:
    names.update(n for n in dir(importlib.import_module(module_name))
                 if not n.startswith('_'))
  return sorted(names)
