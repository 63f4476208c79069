import URLFilterDatabaseCommand

@main
enum URLFilterDatabaseMain {
    static func main() async {
        await URLFilterDatabaseCommand.main()
    }
}
