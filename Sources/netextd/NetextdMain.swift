import NetExtDaemonCommand

@main
enum NetextdMain {
    static func main() async {
        await NetextdCommand.main()
    }
}
