"""`pip install .`: the iosim Python package (python/iosim) and its C++ module, which CMake builds
(python/python.cmake), from Debian's packages alone and offline (README, "Python"):

    python3 -m venv --system-site-packages VENV
    VENV/bin/pip install --no-build-isolation --no-index .

CMAKE_ARGS (a shell-quoted list) is added to CMake's configure step, e.g.
CMAKE_ARGS=-DCMAKE_CXX_COMPILER_LAUNCHER=ccache; CMAKE_BUILD_PARALLEL_LEVEL sets the build's jobs
(default: all cores). tests/python_install_test.sh runs this from a copy of the source tree.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
(ROOT / "build").mkdir(exist_ok=True)  # egg_base below
# One version for the binary and the package: CMakeLists.txt's project(iosim VERSION X.Y.Z).
VERSION = re.search(r"project\(iosim VERSION ([0-9.]+)",
                    (ROOT / "CMakeLists.txt").read_text()).group(1)


class CMakeBuild(build_ext):
    """Builds the _iosim target with CMake and puts the module where setuptools expects it."""

    def build_extension(self, ext):
        build_dir = Path(self.build_temp).resolve() / "cmake"
        configure = ["cmake", "-S", str(ROOT), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
                     "-DIOSIM_BUILD_TESTS=OFF", "-DIOSIM_BUILD_BENCH=OFF",
                     "-DIOSIM_BUILD_CUDA=OFF", "-DIOSIM_BUILD_PYTHON=ON",
                     f"-DPython_EXECUTABLE={sys.executable}"]
        configure += shlex.split(os.environ.get("CMAKE_ARGS", ""))
        subprocess.run(configure, check=True)
        cache = (build_dir / "CMakeCache.txt").read_text()
        if "pybind11_DIR:PATH=pybind11_DIR-NOTFOUND" in cache:
            sys.exit("iosim: CMake found no pybind11 (apt-get install pybind11-dev python3-dev)")
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "_iosim", "-j", jobs],
                       check=True)
        built = sorted((build_dir / "python" / "iosim").glob("_iosim*.so"))
        if len(built) != 1:
            sys.exit(f"iosim: expected one _iosim module in {build_dir}/python/iosim: {built}")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)


setup(
    name="iosim",
    version=VERSION,
    description="GPU memory-hierarchy simulator and IO-complexity analyzer for attention",
    python_requires=">=3.9",
    packages=["iosim"],
    package_dir={"": "python"},
    ext_modules=[Extension("iosim._iosim", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # Under the CMake build folder that the README's set-up makes (ignored by git).
    options={"build": {"build_base": "build/setuptools"}, "egg_info": {"egg_base": "build"}},
    zip_safe=False,
)
