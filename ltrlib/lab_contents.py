"""The contents manager of the project's JupyterLab (`ltrlib.lab`): Jupytext's, so ``.py``
notebooks open as notebooks, with one addition.

A percent script carries no notebook metadata (``jupytext.toml`` filters it all out, since
kernel and language details differ between machines and would only add noise to diffs).
JupyterLab fills ``language_info`` in from the kernel as soon as it connects, and that edit
marks an untouched notebook as modified, so closing it asks to save. Here the model of a
``.py`` notebook already holds what the project's kernel will report, the kernel being
ipykernel on this very interpreter (`ltrlib.lab.KERNEL_NAME`): nothing changes on open.
Saving drops it again through the same filter, so the files stay as they are.
"""

from __future__ import annotations

from ipykernel.ipkernel import IPythonKernel
from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from jupytext.async_contentsmanager import build_async_jupytext_contents_manager_class

__all__ = ["LabContentsManager"]


class LabContentsManager(build_async_jupytext_contents_manager_class(AsyncLargeFileManager)):
    """Jupytext's contents manager; a ``.py`` notebook's model holds its kernel's language_info."""

    async def get(self, path, content=True, type=None, format=None, **kwargs):
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        if content and model.get("type") == "notebook" and str(path).endswith(".py"):
            model["content"]["metadata"].setdefault("language_info", dict(IPythonKernel.language_info))
        return model
