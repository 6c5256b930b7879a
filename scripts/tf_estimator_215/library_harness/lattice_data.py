"""Stand-ins for the two data sets TF Lattice's estimators_test.py loads.

The test downloads the UCI heart data set (`tf.keras.utils.get_file(
'heart.csv', ...)`, which reads `~/.keras/datasets/heart.csv` when it is
there) and calls `sklearn.datasets.load_boston`, which scikit-learn 1.2
removed with its data. Neither can be had here (no network; no package ships
them), so the harness makes both, the same on both sides: tables with the
original columns, value ranges and sizes, whose labels follow the
monotonicities the test's feature configs declare, plus noise. A test that
checks a quality bar (AUC, average loss) is then measured on learnable data
of the same shape; one that depends on the real data's exact correlations
(the lattices 'crystals' picks) may fail on both sides, and then does not
count.

`write_keras_datasets(home)` writes heart.csv under HOME; loaded as a pytest
plugin (`-p lattice_data`), this module gives `sklearn.datasets` a
`load_boston` before the test module imports it.
"""

import os

import numpy as np

HEART_ROWS, BOSTON_ROWS = 303, 506
BOSTON_FEATURES = ('CRIM', 'ZN', 'INDUS', 'CHAS', 'NOX', 'RM', 'AGE', 'DIS',
                   'RAD', 'TAX', 'PTRATIO', 'B', 'LSTAT')


def heart_rows(seed: int = 0):
  """The heart table: a header and HEART_ROWS rows of strings."""
  rng = np.random.RandomState(seed)
  n = HEART_ROWS
  age = rng.randint(29, 78, n)
  sex = rng.randint(0, 2, n)
  cp = rng.randint(0, 5, n)
  trestbps = rng.randint(94, 201, n)
  chol = rng.randint(126, 565, n)
  fbs = (rng.rand(n) < 0.15).astype(int)
  restecg = rng.randint(0, 3, n)
  thalach = rng.randint(71, 203, n)
  exang = (rng.rand(n) < 0.33).astype(int)
  oldpeak = np.round(rng.gamma(1.0, 1.0, n).clip(0, 6.2), 1)
  slope = rng.randint(0, 3, n)
  ca = rng.randint(0, 4, n)
  thal_index = rng.randint(0, 3, n)
  thal = np.array(['normal', 'fixed', 'reversible'])[thal_index]
  # The directions of the test's feature configs.
  z = (0.05 * (age - 53) + 0.6 * sex + 0.5 * (cp - 2) -
       0.02 * (trestbps - 147) + 0.006 * (chol - 345) + 0.4 * fbs +
       0.3 * restecg - 0.03 * (thalach - 137) + 0.8 * exang +
       0.7 * (oldpeak - 1) + 0.4 * slope + 0.7 * (ca - 1.5) +
       0.9 * (thal_index > 0) - 1.9) * 2.0
  target = (rng.rand(n) < 1 / (1 + np.exp(-z))).astype(int)
  header = ['age', 'sex', 'cp', 'trestbps', 'chol', 'fbs', 'restecg',
            'thalach', 'exang', 'oldpeak', 'slope', 'ca', 'thal', 'target']
  columns = [age, sex, cp, trestbps, chol, fbs, restecg, thalach, exang,
             oldpeak, slope, ca, thal, target]
  return header, [[str(c[i]) for c in columns] for i in range(n)]


def write_keras_datasets(home: str) -> None:
  """Writes HOME/.keras/datasets/heart.csv, where get_file looks first."""
  directory = os.path.join(home, '.keras', 'datasets')
  os.makedirs(directory, exist_ok=True)
  header, rows = heart_rows()
  with open(os.path.join(directory, 'heart.csv'), 'w') as f:
    f.write(','.join(header) + '\n')
    for row in rows:
      f.write(','.join(row) + '\n')


def boston_arrays(seed: int = 1):
  """(data [BOSTON_ROWS, 13], target [BOSTON_ROWS]) in BOSTON_FEATURES'
  order."""
  rng = np.random.RandomState(seed)
  n = BOSTON_ROWS
  crim = rng.lognormal(-0.5, 1.5, n).clip(0.006, 89)
  zn = np.where(rng.rand(n) < 0.7, 0.0, rng.uniform(12.5, 100, n))
  indus = rng.uniform(0.46, 27.7, n)
  chas = (rng.rand(n) < 0.07).astype(float)
  nox = rng.uniform(0.385, 0.871, n)
  rm = rng.normal(6.28, 0.7, n).clip(3.56, 8.78)
  age = rng.uniform(2.9, 100, n)
  dis = rng.uniform(1.13, 12.1, n)
  rad = rng.randint(1, 25, n).astype(float)
  tax = rng.uniform(187, 711, n)
  ptratio = rng.uniform(12.6, 22, n)
  b = rng.uniform(0.32, 396.9, n)
  lstat = rng.uniform(1.73, 38, n)
  # The directions of the test's feature configs (RM up, LSTAT, CRIM,
  # PTRATIO, AGE down; DIS unimodal).
  value = (22.5 + 6.0 * (rm - 6.28) - 0.45 * (lstat - 12.6) -
           0.08 * crim - 0.8 * (ptratio - 18.5) - 0.03 * (age - 68) +
           0.02 * zn - 0.15 * (dis - 4.0) ** 2 + 2.0 * chas +
           rng.normal(0, 2.5, n))
  data = np.stack([crim, zn, indus, chas, nox, rm, age, dis, rad, tax,
                   ptratio, b, lstat], axis=1)
  return data, value.clip(5, 50)


def load_boston():
  """What scikit-learn < 1.2's load_boston returned, on boston_arrays."""
  from sklearn.utils import Bunch  # pylint: disable=g-import-not-at-top
  data, target = boston_arrays()
  return Bunch(data=data, target=target,
               feature_names=np.array(BOSTON_FEATURES),
               DESCR='A stand-in for the Boston house prices data set.')


def _give_sklearn_load_boston() -> None:
  try:
    import sklearn.datasets  # pylint: disable=g-import-not-at-top
  except ImportError:
    return
  # Its module __getattr__ raises ImportError for the removed name.
  if 'load_boston' not in vars(sklearn.datasets):
    sklearn.datasets.load_boston = load_boston


_give_sklearn_load_boston()
