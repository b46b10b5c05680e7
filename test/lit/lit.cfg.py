# lit configuration for attnc: FileCheck tests of diagnostics, the cascade
# IR, MLIR interchange and the driver. Runs from the build tree (see
# lit.site.cfg.py.in), with the tools of Debian's llvm-19-tools.
import os
import lit.formats

config.name = "attnc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".attn", ".test"]
config.excludes = ["Inputs"]  # also excludes driver/Inputs
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.attn_obj_root, "test", "lit")
config.environment["PATH"] = os.pathsep.join(
    [config.attn_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
config.environment["FILECHECK_OPTS"] = "--enable-var-scope --dump-input=fail"
config.substitutions.append(("%examples", os.path.join(config.attn_src_root, "examples")))
config.substitutions.append(("%mlir-opt", config.mlir_opt))
config.substitutions.append(("%attnrt_include", os.path.join(config.attn_src_root, "runtime")))
if config.ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", config.ptxas))
if config.mlir:
    # built with LLVM/MLIR 19: --emit=mlir and the reference executor
    config.available_features.add("mlir")
if config.sanitized:
    config.available_features.add("asan")
