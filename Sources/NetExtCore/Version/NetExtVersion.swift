/// NetExt's release, as every binary's `--version` and netextd's hello report it.
public enum NetExtVersion {
    public static let current = "0.1.0"
}
