import Foundation
import NetExtDaemonCommand

@main
enum NetextdMain {
    static func main() async {
        // A reload (SIGHUP) must never end netextd, not even while it starts; it is handled once
        // netextd serves (DaemonLifecycle).
        signal(SIGHUP, SIG_IGN)
        await NetextdCommand.main()
    }
}
