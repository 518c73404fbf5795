"""The server's pages in a real headless Chromium (Debian's), driven by playwright."""
