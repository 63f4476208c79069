// The NetExt module is the one module apps and providers import: it brings the models of
// NetExtCore (configurations, settings, errors, status) with it.
@_exported import NetExtCore
