"""report.html and compare.html: self-contained pages rendered from a saved run directory."""
