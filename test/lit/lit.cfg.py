# lit configuration for brevisc's tests: every *.bdsl and *.test file under this directory.
import os
import lit.formats

config.name = "brevis"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".bdsl", ".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.path.dirname(config.brevis_tools_dir), "..", "test", "lit")

config.environment["PATH"] = os.pathsep.join(
    [config.brevis_tools_dir, config.brevis_gen_dir, config.brevis_test_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
config.substitutions.append(("%data", config.brevis_test_data))
config.substitutions.append(("%jit_module", config.brevis_jit_module))
config.substitutions.append(("%brevisc_exe", os.path.join(config.brevis_tools_dir, "brevisc")))
# Compiled code is not kept across runs unless a test asks for it: the tests must not write
# into the user's cache, and each one's -v summary must not depend on the tests before it.
config.environment["BREVIS_JIT_CACHE"] = "off"
