/// Left-aligned plain-text columns for human output.
enum TextTable {
    static func render(header: [String], rows: [[String]]) -> String {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0.indices.contains(column) ? $0[column].count : 0 }.max() ?? 0 }
        return all.map { row in
            var line = row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
            while line.hasSuffix(" ") { line.removeLast() }  // an empty last column leaves no padding behind
            return line
        }.joined(separator: "\n")
    }
}
