import NetExtCore

/// GRDB also has a `Configuration`; inside netextd the name means NetExt's.
public typealias Configuration = NetExtCore.Configuration
