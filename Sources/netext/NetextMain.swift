import NetExtCLI

@main
enum NetextMain {
    static func main() async {
        await NetextCommand.runMain()
    }
}
