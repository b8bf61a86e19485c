"""Ansible callback: write every file a check-mode --diff run would write, under a directory.

Used by render.yml (and the golden tests) to see the configs the roles render without
touching any host. Enable with ANSIBLE_CALLBACKS_ENABLED=rig_render and set RIG_RENDER_DIR;
a file the play would write to /etc/x on host h lands in $RIG_RENDER_DIR/h/etc/x.
"""

from __future__ import annotations

import os
from pathlib import Path

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: rig_render
type: aggregate
short_description: write the files a check-mode diff run would write into RIG_RENDER_DIR
description: Writes each diff's "after" content to $RIG_RENDER_DIR/<host>/<destination>.
requirements: [enable in callbacks_enabled, set RIG_RENDER_DIR]
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "rig_render"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._root = Path(os.environ.get("RIG_RENDER_DIR", "rendered"))

    def v2_on_file_diff(self, result):
        host = result._host.get_name()
        for item in result._result.get("results", [result._result]):
            diffs = item.get("diff") or []
            # A template's diff headers name its temp file (and a new file has no "before"):
            # the destination is in the module's arguments.
            dest = (item.get("invocation") or {}).get("module_args", {}).get("dest")
            for diff in diffs if isinstance(diffs, list) else [diffs]:
                after = diff.get("after")
                if dest and dest.startswith("/") and isinstance(after, str):
                    path = self._root / host / dest.lstrip("/")
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(after)
