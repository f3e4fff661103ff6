"""Build configuration beyond pyproject.toml: the optional C speed-up of the lm-eval importer.

``optional=True``: where no C compiler is available the install goes on without it and the
importer uses its Python column path (same records, slower; see docs/importers.md "Speed").
Where OpenSSL's headers are installed, content hashes use libcrypto's SHA-256 (several
times faster on CPUs with SHA extensions); if that build fails, the extension is built
again with its own FIPS 180-4 code.
"""

from __future__ import annotations

import os
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

OPENSSL = ("ROLLEVAL_OPENSSL", "1")


def _has_openssl_headers() -> bool:
    roots = {sysconfig.get_config_var("INCLUDEDIR") or "", "/usr/include", "/usr/local/include"}
    return any(os.path.exists(os.path.join(r, "openssl", "sha.h")) for r in roots if r)


class _BuildExt(build_ext):
    """Retry without libcrypto when building with it fails (headers without the library)."""

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception:
            if OPENSSL not in ext.define_macros:
                raise
            self.warn(f"{ext.name}: building with OpenSSL failed; using its own SHA-256")
            ext.define_macros.remove(OPENSSL)
            ext.libraries.remove("crypto")
            super().build_extension(ext)


openssl = _has_openssl_headers()
setup(
    cmdclass={"build_ext": _BuildExt},
    ext_modules=[
        Extension(
            "rolleval._importers.lmeval._strict_c",
            ["src/rolleval/_importers/lmeval/_strict_c.c"],
            optional=True,
            extra_compile_args=["-O2"],
            define_macros=[OPENSSL] if openssl else [],
            libraries=["crypto"] if openssl else [],
        )
    ],
)
