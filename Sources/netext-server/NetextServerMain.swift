import NetExtCommands

@main
enum NetextServerMain {
    static func main() async {
        await ServerCommand.main()
    }
}
