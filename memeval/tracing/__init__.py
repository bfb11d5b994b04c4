"""Tracing runs to Arize Phoenix: OpenTelemetry spans with OpenInference attributes, their
export, the collector endpoint, grades sent back as annotations, traced fixture tools and a
local Phoenix server."""
