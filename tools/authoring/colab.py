"""What a notebook carries for Colab: its badge, its setup cell, and the GPU check notebook.

Each is a function of the GitHub repository and ref the Colab links point at (pyproject's ``[tool.llm-lab]``,
read by ``nbtool.colab_config``) and, for the badge and the setup cell, of the notebook's language. The builder
(``nbtool build``) writes them into every notebook and ``nbtool set-repo`` rewrites them in place.
"""

from __future__ import annotations

import nbformat

from tools.course import LANGS

DIST_NAME = "llm-lab-course"
BADGE_IMG = "https://colab.research.google.com/assets/colab-badge.svg"
SETUP_MARK = "# Colab setup"


def badge_url(repo: str, ref: str, lang: str, name: str) -> str:
    return f"https://colab.research.google.com/github/{repo}/blob/{ref}/notebooks/{lang}/{name}"


def badge_markdown(repo: str, ref: str, lang: str, name: str) -> str:
    return f"[![Open In Colab]({BADGE_IMG})]({badge_url(repo, ref, lang, name)})"


SETUP_FAILED = {
    "en": "Could not install llm_lab {ref} from github.com/{repo} (no internet here, or that release does not exist "
    "yet): check the runtime's connection and run this cell again, or open the notebook from the course README.",
    "zh": "无法从 github.com/{repo} 安装 llm_lab {ref}（此处没有网络，或该版本尚未发布）："
    "请检查运行时的网络连接后重新运行本单元格，或从课程 README 重新打开本笔记本。",
}


SETUP_COMMENT = {
    "en": ": on Google Colab install llm_lab, the course's reference package; elsewhere do nothing.",
    "zh": "：在 Google Colab 上安装本课程的参考包 llm_lab；在其他地方什么也不做。",
}


def setup_code(repo: str, ref: str, lang: str = "en") -> str:
    """The notebook's first code cell: installs the release on Colab, does nothing elsewhere.

    A failed install prints one sentence in the notebook's language instead of pip's traceback.
    """
    message = SETUP_FAILED[lang].format(repo=repo, ref=ref)
    return (
        f"{SETUP_MARK}{SETUP_COMMENT[lang]}\n"
        "import subprocess\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        f'    spec = "{DIST_NAME} @ git+https://github.com/{repo}@{ref}"\n'
        '    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], capture_output=True)\n'
        "    if pip.returncode != 0:\n"
        f"        print({message!r})"
    )


# The GPU check notebook is one for every reader: its introduction, in every language in turn.
GPU_TITLE = {"en": "Check the llm-lab series on a Colab GPU", "zh": "在 Colab GPU 上检查本系列"}
GPU_INTRO = {
    "en": "Run this on a GPU runtime (*Runtime → Change runtime type → GPU*). It installs `llm_lab` {ref}, fetches the "
    "notebooks of the same release, runs nbval over every notebook with the GPU visible, and prints one line: "
    "cells passed and the GPU's name. Without a GPU it says so and runs nothing.",
    "zh": "请在 GPU 运行时上运行（*代码执行程序 → 更改运行时类型 → GPU*）。"
    "它会安装 `llm_lab` {ref}，获取同一版本的笔记本，"
    "在 GPU 可见的情况下用 nbval 检查每个笔记本，"
    "并打印一行结果：通过的单元格数和 GPU 名称。"
    "没有 GPU 时它会如实说明，什么也不运行。",
}


GPU_NOTEBOOK = "tools/colab_nbval.ipynb"  # relative to ROOT


def gpu_notebook(repo: str, ref: str) -> nbformat.NotebookNode:
    """tools/colab_nbval.ipynb: on a Colab GPU, nbval over the release's notebooks, one line of result."""
    url = f"https://colab.research.google.com/github/{repo}/blob/{ref}/tools/colab_nbval.ipynb"
    intro = "\n\n".join(
        [
            "# " + " · ".join(GPU_TITLE[lang] for lang in LANGS),
            f"[![Open In Colab]({BADGE_IMG})]({url})",
            *(GPU_INTRO[lang].format(ref=ref) for lang in LANGS),
        ]
    )
    code = (
        f"# Check every stored output of the llm-lab series on this runtime's GPU (nbval), release {ref}.\n"
        "import subprocess\n"
        "import sys\n"
        "\n"
        "import torch\n"
        "\n"
        f'REPO, REF = "{repo}", "{ref}"\n'
        "\n"
        "if not torch.cuda.is_available():\n"
        '    print("No GPU in this runtime (torch.cuda.is_available() is False), nothing was run: "\n'
        '          "choose Runtime > Change runtime type > GPU, then run this cell again.")\n'
        "else:\n"
        f'    spec = f"{DIST_NAME}[test] @ git+https://github.com/{{REPO}}@{{REF}}"\n'
        '    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], check=True)\n'
        '    subprocess.run([sys.executable, "-m", "llm_lab.dev.gpu_check", "--fetch", REPO, REF])'
    )
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "colab": {"provenance": []},
        "accelerator": "GPU",
    }
    nb.cells = [nbformat.v4.new_markdown_cell(intro), nbformat.v4.new_code_cell(code)]
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"gpu-check-{i}"
    return nb
