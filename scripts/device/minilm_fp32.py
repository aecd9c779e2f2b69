"""Device-side: the carried fp16 MiniLM weights back to a float32 model folder (the checkpoint's own dtype)."""
import shutil
import sys
from pathlib import Path

from safetensors.torch import load_file, save_file

src, dst = Path(sys.argv[1]), Path(sys.argv[2])
shutil.copytree(src, dst, dirs_exist_ok=True)
sd = load_file(src / "model.safetensors")
save_file({k: (v.float() if v.is_floating_point() else v).contiguous() for k, v in sd.items()}, dst / "model.safetensors",
          metadata={"format": "pt"})
