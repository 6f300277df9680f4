"""triton_code.py -- the code Triton made for a capture: save_code(kernels, out, dtype, info) writes each stage's PTX
as OUT/ptx-DTYPE-STAGE.ptx and its SASS (cuobjdump of the cubin) as OUT/sass-DTYPE-STAGE.sass, and records the
kernels' names, warps and stages in info["compiled"] (errors in info["code_errors"]). Used by capture_triton_mla.py
and capture_sglang_decode.py on the device machine."""
import os
import subprocess
import tempfile


def save_code(kernels, out, dtype, info):
    for stage, ck in zip(("stage1", "stage2"), kernels):
        try:
            tag = f"{dtype}-{stage}"
            with open(os.path.join(out, f"ptx-{tag}.ptx"), "w") as f:
                f.write(ck.asm["ptx"])
            with tempfile.NamedTemporaryFile(suffix=".cubin") as cub:
                cub.write(ck.asm["cubin"])
                cub.flush()
                sass = subprocess.run(["cuobjdump", "-sass", cub.name], capture_output=True, text=True).stdout
            with open(os.path.join(out, f"sass-{tag}.sass"), "w") as f:
                f.write(sass)
            info.setdefault("compiled", {})[stage] = {"name": ck.name, "num_warps": ck.metadata.num_warps,
                                                      "num_stages": ck.metadata.num_stages}
        except Exception as e:
            info.setdefault("code_errors", []).append(str(e)[:200])
