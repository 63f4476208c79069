import NetExtServerCommands

@main
enum NetextServerMain {
    static func main() async {
        await ServerCommand.main()
    }
}
