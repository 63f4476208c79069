import Foundation
import NetExtServerCommands

@main
enum NetextServerMain {
    static func main() async {
        // A reload (SIGHUP) must never end a server, not even while it loads its files; each
        // role handles it once it serves (DaemonLifecycle).
        signal(SIGHUP, SIG_IGN)
        await ServerCommand.main()
    }
}
