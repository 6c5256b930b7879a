"""The public names themselves: each resolves, to what kind of object, which
names are one object, and the constants' values.

A program that does `tf.compat.v1.estimator.X is tf.estimator.X`, or keeps
a class from one namespace and an instance from the other, sees this; the
coverage map (trace.py) also relies on names that are one object being one
here too. Nothing is called: the other scenarios call the names.
"""

import json

import tensorflow as tf

from scripts.tf_estimator_215.observe import describe as describe_lib


def _kind(obj) -> str:
  if obj is None:
    return 'missing'
  if isinstance(obj, type):
    return 'class'
  return 'module' if type(obj).__name__ in (
      'module', 'LazyLoader', 'StandIn', 'TFModuleWrapper') or hasattr(
          obj, '__path__') else ('function' if callable(obj) else 'constant')


def run(rec):
  with open(describe_lib.API_JSON) as f:
    names = sorted(json.load(f)['names'])
  objects = {name: describe_lib.resolve(name) for name in names}
  rec.raw('kinds', {name: _kind(obj) for name, obj in objects.items()})
  groups = {}
  for name, obj in objects.items():
    if obj is not None and _kind(obj) != 'module':
      groups.setdefault(id(obj), []).append(name)
  rec.raw('names that are one object', {
      name: [other for other in group if other != name]
      for group in groups.values() if len(group) > 1 for name in group})
  keys = tf.estimator.ModeKeys
  rec.raw('ModeKeys', [keys.TRAIN, keys.EVAL, keys.PREDICT,
                       tf.compat.v1.estimator.ModeKeys.PREDICT])
  rec.value('NanLossDuringTrainingError bases', [
      c.__name__ for c in tf.estimator.NanLossDuringTrainingError.__mro__])
