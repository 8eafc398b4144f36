"""The web view: static pages shipped in the package (``static/``), their routes, and how the page signs in.

Plain HTML, CSS and JavaScript: nothing to build, no Node toolchain to install memcli.
"""
