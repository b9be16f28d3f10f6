"""The package list, beside pyproject.toml (which holds everything else): the grader's
packages and, where this source holds them (a student release does not), the references as
``grader._references``, so that an install outside the source (a wheel, ``pip install .`` on
a Dask worker) grades as the checkout does (``catalog.SOLUTIONS_DIR``)."""

from pathlib import Path

from setuptools import find_namespace_packages, setup

HERE = Path(__file__).resolve().parent
PACKAGES = find_namespace_packages(include=["grader*"])  # (as pyproject's find did)
if (HERE / "solutions").is_dir():
    setup(packages=[*PACKAGES, "grader._references"],
          package_dir={"grader._references": "solutions"},
          package_data={"grader._references": ["*.py", "*.confirm.json"]})
else:
    setup(packages=PACKAGES)
