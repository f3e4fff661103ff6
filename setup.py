"""Build configuration beyond pyproject.toml: the optional C speed-up of the lm-eval importer.

``optional=True``: where no C compiler is available the install goes on without it and the
importer uses its Python column path (same records, slower; see docs/importers.md "Speed").
Where OpenSSL's headers are installed, content hashes use libcrypto's SHA-256 (several
times faster on CPUs with SHA extensions); else the extension's own FIPS 180-4 code.
"""

import os
import sysconfig

from setuptools import Extension, setup


def _openssl() -> dict:
    include = sysconfig.get_config_var("INCLUDEDIR") or "/usr/include"
    for root in {include, "/usr/include", "/usr/local/include"}:
        if os.path.exists(os.path.join(root, "openssl", "sha.h")):
            return {"define_macros": [("ROLLEVAL_OPENSSL", "1")], "libraries": ["crypto"]}
    return {}


setup(
    ext_modules=[
        Extension(
            "rolleval.importers._strict_c",
            ["src/rolleval/importers/_strict_c.c"],
            optional=True,
            extra_compile_args=["-O2"],
            **_openssl(),
        )
    ]
)
